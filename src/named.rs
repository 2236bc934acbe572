//! The `named!` macro: an enum of unit variants whose stable names (in `ralph.toml`,
//! the checkpoint, the journal) are written once. A leaf of the crate's floors: it
//! imports nothing, so config, recovery, supervise and state all take it from here
//! and none of them from another.

/// An enum of unit variants whose stable names are written once: serde reads and
/// writes each variant as its name, and `as_str` and `Display` give it.
macro_rules! named {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)*
        }

        impl $name {
            $vis fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use named;
