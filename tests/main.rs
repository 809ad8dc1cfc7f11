//! The one integration-test binary. Fixtures are catalogued in `tests/README.md`.

mod cli;
mod common;
mod conformance;
mod hostile;
