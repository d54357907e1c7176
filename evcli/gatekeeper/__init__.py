"""The Gatekeeper: deterministic checks that every citation is real."""
