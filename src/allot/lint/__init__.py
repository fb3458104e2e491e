"""Static checks of a DRA catalogue against published devices (``allot lint``). Pure."""
