"""Why a request is refused before any upstream call: the rules and the reasons."""
