"""Why the router chose what it chose: reasons the selection returns beside its decision."""
