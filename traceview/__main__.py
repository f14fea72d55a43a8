from traceview.cli import program

program()
