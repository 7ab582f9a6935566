// Double binary tree all-reduce (NCCL's Tree; Sanders, Speck & Träff, "Two-tree algorithms for
// full bandwidth broadcast, reduction and scan"): latency in log2 n levels instead of the ring's
// n - 1 steps, for small and medium messages at scale.
//
// Composition: the buffer is split into two halves; half t is reduced up tree t to its root and
// broadcast back down, chunk by chunk (chunks of one pipeline slice). Tree 0 is NCCL's binary
// tree over positions (patterns.h binaryTree: position 0 on top with one child, then in order),
// tree 1 its mirror (even n) or its shift by one (odd n), so for even n every rank is interior
// in one tree and a leaf in the other and both halves keep every rank busy.
//   up:   a leaf sends its chunk to its parent; an interior rank reduces its children's chunks
//         into its own (recvReduceCopy, then recvReduceSend to its parent); the root's last
//         reduction is final (divided by n for avg).
//   down: the root sends the final chunk to its children; an interior rank receives it and
//         forwards it (recvCopySend to the first child, send to the second); a leaf receives it.
// Order: every rank runs the same rounds — up(chunk i) of both trees, then down(chunk i - 2D)
// of both trees, D = ceil(log2 n) levels — so each directed link carries its messages in the
// same order at both ends, chunks come down while later ones still go up, and a round waits
// only for the same round at its tree neighbours (no deadlock).
// Steps: 2D levels per chunk on the critical path, pipelined over ceil(S / 2 / slice) chunks per
// tree. Bytes sent per rank: at most 2S (interior in one tree: S/2 up and S down; a leaf in the
// other: S/2 up), like the ring's 2(n-1)/n * S. Every final value is computed once, by its
// tree's root, and copied down, so all ranks agree bitwise.
// In place: a rank's chunk is overwritten only by the final value coming down, which is causally
// after its parent received what it sent up (the executor's rule for reused send regions).
#include "algorithms/allreduce/tree.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "algorithms/patterns.h"

namespace trnccl::algorithms::allreduce {

using schedule::Primitive;
using schedule::Step;

namespace {

// This rank's place in one of the two trees, over one half of the buffer.
struct TreeHalf {
  int parent = -1;        // rank, -1 at the root
  std::vector<int> kids;  // ranks
  const std::byte* in;    // the half's first element
  std::byte* out;
  size_t count;  // elements of the half
};

TreeHalf treeHalf(const Ring& g, int t, const std::byte* in, std::byte* out, Block half,
                  size_t elem) {
  const TreeNode node = doubleBinaryTree(g.size(), g.pos, t);
  TreeHalf h{node.parent < 0 ? -1 : g.members[node.parent],
             {},
             in + half.offset * elem,
             out + half.offset * elem,
             half.count};
  for (int c : node.child) {
    if (c >= 0) h.kids.push_back(g.members[c]);
  }
  return h;
}

void up(schedule::Schedule& s, const TreeHalf& h, size_t off, size_t n, size_t elem, bool avg) {
  const std::byte* in = h.in + off * elem;
  std::byte* out = h.out + off * elem;
  if (h.kids.empty()) {
    s.add(Step{.prim = Primitive::kSend, .sendPeer = h.parent, .src = in, .count = n});
    return;
  }
  for (size_t j = 0; j < h.kids.size(); ++j) {
    const bool last = j + 1 == h.kids.size();
    const bool forward = last && h.parent >= 0;
    s.add(Step{.prim = forward ? Primitive::kRecvReduceSend : Primitive::kRecvReduceCopy,
               .recvPeer = h.kids[j],
               .sendPeer = forward ? h.parent : -1,
               .src = j == 0 ? in : out,
               .dst = out,
               .count = n,
               .postOp = last && h.parent < 0 && avg});
  }
}

void down(schedule::Schedule& s, const TreeHalf& h, size_t off, size_t n, size_t elem) {
  std::byte* out = h.out + off * elem;
  if (h.parent < 0) {
    std::vector<Step> sends;
    for (int kid : h.kids) {
      sends.push_back(Step{.prim = Primitive::kSend, .sendPeer = kid, .src = out, .count = n});
    }
    s.addGroup(std::move(sends));
    return;
  }
  if (h.kids.empty()) {
    s.add(Step{.prim = Primitive::kRecv, .recvPeer = h.parent, .dst = out, .count = n});
    return;
  }
  s.add(Step{.prim = Primitive::kRecvCopySend,
             .recvPeer = h.parent,
             .sendPeer = h.kids[0],
             .dst = out,
             .count = n});
  if (h.kids.size() > 1) {
    s.add(Step{.prim = Primitive::kSend, .sendPeer = h.kids[1], .src = out, .count = n});
  }
}

schedule::Schedule tree(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kTree.name);
  std::vector<int> members(static_cast<size_t>(a.nranks));
  std::iota(members.begin(), members.end(), 0);
  const size_t elem = device::dataTypeSize(a.type);
  treeAllReduce(s, Ring{members, a.rank}, static_cast<const std::byte*>(a.send),
                static_cast<std::byte*>(a.recv), a.count, std::max<size_t>(1, a.sliceBytes / elem),
                a.op == device::RedOp::kAvg);
  return s;
}

// A level's edges join positions about 2^(depth - level) apart (patterns.h binaryTree, and its
// mirror), every rank sending at once: the links of the tree's edges that long (levelLink).
// Its messages: each tree's n - 1 edges carry every chunk of its half up and down.
double estimate(const CollArgs& a, const LinkModel& m) {
  const int depth = treeDepth(a.nranks);
  const double chunks =
      std::max(1.0, std::ceil(totalBytes(a) / 2 / std::max<size_t>(1, a.sliceBytes)));
  return treeAllReduceTime(
             totalBytes(a), static_cast<double>(a.sliceBytes),
             treeLevels(a.nranks,
                        [&](int level) { return levelLink(m, m.treePartners, depth - level); }),
             m) +
         hostMessagesUs(a, m, 4.0 * (a.nranks - 1) * chunks);
}

}  // namespace

void treeAllReduce(schedule::Schedule& s, const Ring& group, const std::byte* in, std::byte* out,
                   size_t count, size_t sliceElems, bool postOp) {
  const int k = group.size();
  if (k == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = in, .dst = out, .count = count});
    return;
  }
  const size_t elem = device::dataTypeSize(s.type);
  const size_t chunk = std::max<size_t>(1, sliceElems);
  const TreeHalf halves[2] = {treeHalf(group, 0, in, out, evenBlock(count, 2, 0), elem),
                              treeHalf(group, 1, in, out, evenBlock(count, 2, 1), elem)};
  const size_t chunks = (halves[0].count + chunk - 1) / chunk;  // half 0 is the larger
  const size_t lag = 2 * static_cast<size_t>(treeDepth(k));
  auto piece = [&](const TreeHalf& h, size_t i) {
    const size_t lo = std::min(h.count, i * chunk);
    return std::pair{lo, std::min(chunk, h.count - lo)};
  };
  for (size_t i = 0; i < chunks + lag; ++i) {
    for (const TreeHalf& h : halves) {
      if (i < chunks) {
        auto [off, n] = piece(h, i);
        up(s, h, off, n, elem, postOp);
      }
    }
    for (const TreeHalf& h : halves) {
      if (i >= lag && i - lag < chunks) {
        auto [off, n] = piece(h, i - lag);
        down(s, h, off, n, elem);
      }
    }
  }
}

std::vector<TreeLevel> treeLevels(int k, const std::function<LinkCost(int level)>& link) {
  std::vector<TreeLevel> levels;
  for (int level = 1; level <= treeDepth(k); ++level) {
    // The root has one child; below it a parent receives from two.
    levels.push_back(TreeLevel{link(level), level == 1 ? 1 : 2});
  }
  return levels;
}

const Algorithm kTree = {
    .name = "tree",
    .description = "double binary tree: reduce up, broadcast down, a half per tree, pipelined",
    .supports = [](const CollArgs& a) { return a.nranks > 1; },
    .estimate = estimate,
    .usesChannels = false,
    .build = tree,
};

}  // namespace trnccl::algorithms::allreduce
