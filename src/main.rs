//! The `ralph` binary: everything lives in the library; see `ralph::main`.

fn main() {
    std::process::exit(ralph::main());
}
