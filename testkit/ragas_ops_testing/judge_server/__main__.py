"""`python -m ragas_ops_testing.judge_server`: the test judge's command line."""

import sys

from ragas_ops_testing.judge_server.cli import main

sys.exit(main())
