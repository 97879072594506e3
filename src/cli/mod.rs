//! Command line: clap subcommands that call the domain layers and print tables or JSON.
