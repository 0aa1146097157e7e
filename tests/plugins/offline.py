"""A pytest plugin (``-p tests.plugins.offline``) for a machine without the portfolio data: its
download URL fails at once (nothing listens on port 9 of the loopback), whatever the network."""

import problems.portfolio_data as portfolio_data

portfolio_data.URL = "http://127.0.0.1:9/data.pkl"
