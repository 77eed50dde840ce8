"""The report's sections: each a function of the loaded run returning Markdown lines."""
