//! Tests of the whole loader: the example file, the design sketch, and every error.
