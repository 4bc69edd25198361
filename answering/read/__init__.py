"""The offline reader: the statements that answer, quoted with their lead-ins, or the sections suggested."""
