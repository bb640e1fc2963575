"""Token estimates: what a request is reckoned to use before its upstream reports (tokens), and how far a deployment's reports run above the estimate (calibration)."""
