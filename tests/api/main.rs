//! The platform's integration suite: one test binary that spawns the real application per
//! test and drives it over HTTP.

mod helpers;

mod changefeed;
mod errors;
mod feed;
mod interactions;
mod posts;
mod restart;
mod users;
