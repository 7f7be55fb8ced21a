//! The `bulkwatch` binary: parse arguments, dispatch, map the outcome to an
//! exit code (0 ok, 1 bulk found, 2 error).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Tesseract's OpenMP on one thread (its idle threads spin; a picture
    // took three times as long on two cores): read once, when the library
    // loads. Set here, before this process has a second thread; its
    // workers get it in their environment.
    if std::env::var_os("OMP_THREAD_LIMIT").is_none() {
        std::env::set_var("OMP_THREAD_LIMIT", "1");
    }
    let cli = bulkwatch::cli::Cli::parse();
    if matches!(cli.command, bulkwatch::cli::Command::Worker) {
        return bulkwatch::worker::child::run();
    }
    let outcome = bulkwatch::cli::run(cli);
    // Tesseract, when this process read pictures of text itself.
    bulkwatch_ocr::stop();
    match outcome {
        Ok(bulkwatch::cli::Exit::Ok) => ExitCode::SUCCESS,
        Ok(bulkwatch::cli::Exit::BulkFound) => ExitCode::from(1),
        Err(e) => {
            bulkwatch::cli::print_error(&e);
            ExitCode::from(2)
        }
    }
}
