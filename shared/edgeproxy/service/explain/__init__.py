"""The routing explainer: which deployment a request would get now, and why each other not."""
