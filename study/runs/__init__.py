"""Where numbers are stored and where they came from: result files and errata (results), older
record shapes brought up to date (upgrades), provenance, checkpoints, the experiment contract,
the runner, the Ray engine and the release history."""
