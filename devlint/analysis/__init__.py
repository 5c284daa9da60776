"""The judgement every rule asks, below the rules: what a value is (kinds), where it lives (placement),
whether code only runs with CUDA (guards, conditions, versions), which device a fix may write (device),
and what the other files of the project define (project, importers).

An analysis reads the facts of one file (devlint.facts) and the project index, and asks another analysis
through its module-level accessor; nothing here imports a rule, the engine, the fixer or a front door.
"""
