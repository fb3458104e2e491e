"""Reading users' manifest files and judging them as the API server would.

``documents`` reads YAML/JSON streams; ``verdicts`` decodes, defaults, validates and
renders kubectl-style results. Sits above ``validation`` and below ``cli``.
"""
