"""The command line's parts that know no experiment: its parser, the instrument's commands
(`study check`, `study conformance`), and HELP, the words of help.toml: what `study --help`,
`study COMMAND --help` and the pytest plugin's options in `pytest --help` say. study.cli, the
entry point, holds the commands that run and render the registered experiments."""
import os
import tomllib

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "help.toml"), "rb") as f:
    HELP = tomllib.load(f)
