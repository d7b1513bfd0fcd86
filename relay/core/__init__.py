"""The pure heart of relay: states, events, transitions and policies. Stdlib only."""
