// Package layers has no code. Its test holds the rules of which of the module's packages may
// import which (DESIGN.md, Architecture; CONTRIBUTING.md, Design in brief), checked over
// `go list -deps`, so that an import that runs back up a layer fails `make unit` and names the chain
// that brought it in.
package layers
