"""The fleet checks moved to envdoctor/checks/fleet.py, registered with the others (checks/registry.py).

Kept only for the import in cli.py's ``cmd_explain`` until explain reads the registry (checks/catalog.py):
delete this module with that change. The fleet checks are in ``checks.all_checks()``, so this list is empty.
"""

FLEET_CHECKS: list = []
