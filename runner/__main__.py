"""`python -m runner` is the `tooltrial` command."""

import sys

from runner.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
