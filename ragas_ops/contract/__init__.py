"""The contracts every stage shares: the input columns, the output columns, the
per-row statuses and the lake's layout. The bottom layer: it imports no other room."""
