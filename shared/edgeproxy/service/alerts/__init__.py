"""Budget alerts in the service: the signature (signature), the webhook (webhook), the decision of who sends and the retry sweep (notifier)."""
