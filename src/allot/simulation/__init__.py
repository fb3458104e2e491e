"""What-if simulations of DRA allocation: scenario files, step runner, explanations.

``scenario`` parses ``{features, objects, steps}``; ``runner`` places each step's claims
like kube-scheduler does for one pod; ``explain`` says why a step did not fit;
``report`` renders JSON and text. Pure: the CLI reads files and prints.
"""
