"""Built-in systems under test. Each sub-package exposes `SUITE` and sees only `harness.probe`."""
