//! Tests of the `atrium` binary as a process, one test binary: the CLI, signals, kill -9 in
//! the middle of platform calls, a busy database, and the docs' curl walkthroughs run against
//! a spawned server. One binary builds and links the shared code once, where a binary per file
//! did it five times.
mod busy_database;
mod crash;
mod docs_cli;
mod signals;
mod walkthroughs;
