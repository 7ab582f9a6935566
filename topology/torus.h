// Pure torus arithmetic over row-major device numbers d = cols * r + c (neuron-ls numbering).
#pragma once

#include <array>
#include <vector>

#include "common/status.h"

namespace trnccl::topology {

// (a mod n) for possibly negative a.
constexpr int wrap(int a, int n) { return ((a % n) + n) % n; }

enum TorusDirection : int { kUp = 0, kLeft = 1, kDown = 2, kRight = 3 };

// Neighbours of `device` in neuron-ls order (up, left, down, right):
// [cols*((r-1) mod rows)+c, cols*r+((c-1) mod cols), cols*((r+1) mod rows)+c, cols*r+((c+1) mod
// cols)]. On a 4x4 torus device 0 → 12, 3, 4, 1 and device 5 → 1, 4, 9, 6, as `neuron-ls
// --topology` prints on trn1.32xlarge and trn2.48xlarge. Entries repeat when a dimension is 1 or 2.
std::array<int, 4> torusNeighbors(int device, int rows, int cols);

bool areTorusNeighbors(int a, int b, int rows, int cols);

// Shortest number of hops between two devices using the wrap-around links.
int torusDistance(int a, int b, int rows, int cols);

// Shortest distance along a ring of n positions.
int ringDistance(int a, int b, int n);

// Two edge-disjoint Hamiltonian cycles of an n x n torus (n >= 3), as device sequences
// starting at 0. The first is a staircase: along a row for n-1 steps, then one step down,
// each row entered one column further left; on a square torus it closes after n rows and uses
// exactly one vertical link per column, so what is left — the other n-1 links of every column
// plus one horizontal link per row — is again a single cycle (the second). Two rings that
// share no link can run as two channels at full link bandwidth each, as the Neuron runtime's
// KangaRing does. Error for a non-square or smaller torus.
Result<std::array<std::vector<int>, 2>> disjointTorusRings(int rows, int cols);

// A cycle over the first `usedRows` full rows of a rows x cols torus that steps only along
// links: one row → the row itself (through the wrap link); an even number of rows → a snake
// (right along row 0, back and forth over columns 1..cols-1, up column 0). Empty when no such
// simple cycle exists here (an odd number of rows above one).
std::vector<int> torusRowsRing(int usedRows, int rows, int cols);

}  // namespace trnccl::topology
