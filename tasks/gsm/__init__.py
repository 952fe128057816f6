"""Task gsm: grade-school word problems in GSM8K's format, decoded by a character-level text MDM."""
