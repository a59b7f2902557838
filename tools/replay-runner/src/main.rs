fn main() -> std::process::ExitCode {
    replay_runner::cli::main()
}
