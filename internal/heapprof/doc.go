// Package heapprof is for memory work only. In a build with the heapprof
// tag (go build -tags heapprof; the scale bench builds the program so with
// GOFLAGS=-tags=heapprof) and HEAPPROF_DIR set, the program writes the heap
// profile after every GC, named by the process, the GC's number and the live
// heap it left, so that the program's own heap at each step of a run can be
// read without the fakes that share the process of an in-process profile
// (docs/bench.md, "Profiling"). In any other build the package is empty.
package heapprof
