"""Input: the cell grammar, the one CSV reader, the declared schema, the data owner's file check, and the engines."""
