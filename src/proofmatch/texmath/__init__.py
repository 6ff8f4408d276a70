"""A TeX subset -> the MathML of LaTeXML and arXMLiv (lexer, parse, writer, dialects; entry: ``convert``),
used by the demo generator and by search queries; a library of its own, it imports nothing else of the project."""
