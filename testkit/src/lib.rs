//! What the test crates of cosmos-blog share (`tests/api`, `tests/functions.rs`,
//! `tests/harness_smoke.rs`) and the benchmark harness (`benches/harness`): the Cosmos DB
//! store on the SDK's in-memory emulator and the launcher of the real binary.

pub mod emulator;
pub mod served;
