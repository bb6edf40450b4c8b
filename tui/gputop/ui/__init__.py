"""Everything Textual: the app, its screens and widgets."""
