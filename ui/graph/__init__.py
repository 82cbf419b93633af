"""The Graph editor: a question's IU graph edited, validated, versioned, exported, imported and extracted."""
