from bench.cli import program

raise SystemExit(program())
