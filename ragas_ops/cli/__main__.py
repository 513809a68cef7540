"""`python -m ragas_ops.cli`: the `ragas-ops` command."""

import sys

from ragas_ops.cli.main import main

sys.exit(main())
