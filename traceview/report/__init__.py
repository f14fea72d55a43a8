"""`traceview report`: the dashboard's charts as one static HTML file (`page`), its page with the
charting scripts packed (`htmlpage`), and the section that sets two runs side by side
(`diff_section`)."""
