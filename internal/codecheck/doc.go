// Package codecheck holds repository-wide checks on the code's shape and
// the docs' references: no function longer than a screen, every path a
// document names present. It has no code of its own; its tests read the
// tree from the module root.
package codecheck
