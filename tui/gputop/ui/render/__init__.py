"""What widgets draw, as plain values: texts, roles, rows. No widgets here."""
