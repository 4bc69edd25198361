"""Whether the evidence answers the question: answer, suggest the section, or say so."""
