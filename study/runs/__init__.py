"""Where numbers are stored and where they came from: results as tidy Parquet tables with their
provenance and errata (results, tables), provenance, checkpoints, the experiment contract, the
runner, the Ray engine, the release history and the interpreters it needs."""
