"""No scenario installs anything: every install happens in the set-up (harness/setup.sh, run by
test.sh before any scenario), so that nothing it prints lands in a scenario's compared output and a
new machine passes as a set-up one does. Reads the scenarios and the programs beside them, the
package tests, the major-upgrade test and the soak's programs (pgrx-tests/soak: soak.sh does its
set-up first); prints each install line with its file and line number.

Usage: python3 pgrx-tests/checks/no_installs.py [ROOT]
"""
import pathlib
import re
import sys

INSTALLS = re.compile(
    r"\b(ensure_[a-z_]+|apt-get\s+(-\S+\s+)*install|apt\s+install|dpkg\s+-i|pip3?\s+install|-m\s+pip\s+install"
    r"|-m\s+venv|npm\s+(ci|install|i)\b|npx\s|cargo\s+(install|fetch))"
)
# The package install test installs the package under test, which is what it tests.
ALLOWED = {"pgrx-tests/packaging/package_debian_install.sh": "installs the .deb it tests"}


def main(root):
    root = pathlib.Path(root)
    found = 0
    for d in ["pgrx-tests/scenarios", "pgrx-tests/packaging", "pgrx-tests/major_upgrade", "pgrx-tests/soak"]:
        for path in sorted((root / d).glob("*")):
            rel = path.relative_to(root).as_posix()
            if path.suffix not in (".sh", ".py", ".sql") or rel in ALLOWED:
                continue
            for n, line in enumerate(path.read_text().split("\n"), 1):
                code = line.split("#", 1)[0] if path.suffix in (".sh", ".py") else line.split("--", 1)[0]
                if INSTALLS.search(code):
                    print(f"{rel}:{n}: installs in a scenario (move it to harness/setup.sh): {line.strip()}")
                    found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]))
