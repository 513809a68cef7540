"""A real Airflow on one machine, run from a checkout of ragas-ops, in the test kit because the
library has no need of it: `ragas-ops airflow up` / `down` (`standalone`, its components
started by `supervisor`, its SQLite metadata database made to wait by `sqlite`), `ragas-ops
demo` (`demo`: the DAG run by `dag.test()` over a sample lake) and `make cluster` (`cluster`:
the compose topology as processes), with what they share: where the checkout is
(`checkout`) and the processes, ports and HTTP calls of a launcher (`processes`).

Imports nothing: every Airflow process of `airflow up` imports `sqlite` at start-up, this
package's `__init__` with it."""
