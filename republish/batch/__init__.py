"""Batch solving: manifests of many publication problems, solved on local processes or a
Dask cluster under time limits, with results in Parquet."""
