package knowledge

import (
	"embed"
	"io/fs"
)

// The six top-level folders of the tree. Embedding folders (not patterns)
// takes every file below them except hidden ones; Load keeps the .md files.
//
//go:embed constraints guidance hardware languages operators examples
var tree embed.FS

// Embedded returns the knowledge base compiled into the binary, rooted so
// that paths read "guidance/coalescing.md".
func Embedded() fs.FS { return tree }
