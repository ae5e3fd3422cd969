/*
 * outline.cpp - a long kernel cut into functions of bounded size before it
 * is optimised, so that no function the optimiser and the code generator
 * see grows with the kernel.
 *
 * Several of LLVM's passes take more than linear time in the size of the
 * function they work on: X86's domain reassignment (quadratic), the
 * register coalescer, loop vectorization and induction-variable
 * simplification (analyses of the whole function recomputed for each loop
 * they change).  A gufunc of 240 array statements, each a loop or two in
 * the one kernel function, took 15.7 s to optimise and compile (n^1.8).
 *
 * A kernel is a chain of statements: each statement's code is entered
 * from the one before (the failure exits all lead to one cleanup block).
 * In the dominator tree that chain is the path that always descends into
 * the largest subtree (the heavy path).  Cut along it, every piece
 * between two of its blocks is entered only at its first block (a block
 * dominated by the piece's first is reached through it), unless a loop
 * spans the cut, which the check below refuses.  Pieces of about
 * CC_OUTLINE_PIECE instructions each become an internal, noinline
 * function (LLVM's CodeExtractor: the values they use are parameters,
 * those they define for later ones come back through pointers), called
 * where the piece was.  Whole statements stay together, with what LLVM
 * knows of them (a scratch array fresh from malloc, its strides), so each
 * piece is optimised as well as before, in time that depends on its size
 * alone.  A piece still too large (a long branch of an if) is cut in turn.
 *
 * passes.c's optimise() calls cc_outline before its pipeline, for modules of
 * more than CC_OUTLINE_ABOVE instructions: every realistic kernel measured
 * is far below, and compiles exactly as before.  Runs inside a cg_run
 * (guard.h), as every step into LLVM does.
 */
#include "compiler/outline.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <llvm/IR/CFG.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/CodeExtractor.h>

namespace {

using Node = llvm::DomTreeNode;
using Blocks = std::vector<llvm::BasicBlock *>;

/* Instructions in each dominator subtree of f. */
std::unordered_map<Node *, unsigned>
subtree_sizes(llvm::DominatorTree &dt)
{
    std::unordered_map<Node *, unsigned> size;
    std::vector<std::pair<Node *, bool>> stack{{dt.getRootNode(), false}};
    while (!stack.empty()) { /* post order, without recursion */
        auto [node, done] = stack.back();
        stack.pop_back();
        if (!done) {
            stack.push_back({node, true});
            for (Node *child : node->children()) {
                stack.push_back({child, false});
            }
            continue;
        }
        unsigned n = (unsigned)node->getBlock()->size();
        for (Node *child : node->children()) {
            n += size[child];
        }
        size[node] = n;
    }
    return size;
}

/* The blocks of from's subtree but those of stop's, from's block first. */
Blocks
region(Node *from, Node *stop)
{
    Blocks blocks;
    std::vector<Node *> stack{from};
    while (!stack.empty()) {
        Node *node = stack.back();
        stack.pop_back();
        blocks.push_back(node->getBlock());
        for (Node *child : node->children()) {
            if (child != stop) {
                stack.push_back(child);
            }
        }
    }
    return blocks;
}

/* Whether only the first of blocks is entered from outside them. */
bool
single_entry(const Blocks &blocks)
{
    std::unordered_set<llvm::BasicBlock *> in(blocks.begin(), blocks.end());
    for (size_t i = 1; i < blocks.size(); i++) {
        for (llvm::BasicBlock *pred : llvm::predecessors(blocks[i])) {
            if (in.count(pred) == 0) {
                return false;
            }
        }
    }
    return true;
}

/* The first cut at or after `end` (of at most `tries`) that leaves the
 * blocks from `from` to it entered at `from` alone: its index, the blocks
 * in *blocks; path.size() when there is none. */
size_t
next_cut(const std::vector<Node *> &path, size_t from, size_t end, Blocks *blocks)
{
    for (size_t tries = 0; end < path.size() && tries < 64; end++, tries++) {
        *blocks = region(path[from], path[end]);
        if (single_entry(*blocks)) {
            return end;
        }
    }
    return path.size();
}

/* Pieces of f along its heavy path, of at most about `piece` instructions
 * each (a block whose other subtrees are larger alone makes a piece). */
std::vector<Blocks>
pieces_of(llvm::DominatorTree &dt, unsigned piece)
{
    std::unordered_map<Node *, unsigned> size = subtree_sizes(dt);
    std::vector<Node *> path{dt.getRootNode()};
    while (!path.back()->children().empty()) {
        Node *heavy = nullptr;
        for (Node *child : path.back()->children()) {
            heavy = heavy == nullptr || size[child] > size[heavy] ? child : heavy;
        }
        path.push_back(heavy);
    }
    std::vector<Blocks> pieces;
    size_t start = 1; /* never the entry block: the function's allocas are there */
    while (start + 1 < path.size() && size[path[start]] > piece) {
        size_t end = start + 1;
        while (end + 1 < path.size() && size[path[start]] - size[path[end + 1]] <= piece) {
            end++;
        }
        Blocks blocks;
        if ((end = next_cut(path, start, end, &blocks)) == path.size()) {
            break; /* the rest stays where it is */
        }
        pieces.push_back(std::move(blocks));
        start = end;
    }
    return pieces;
}

/* Whether blocks moved into a function of their own (noinline), which is
 * then added to more when still much larger than `piece`. */
bool
outline(llvm::DominatorTree &dt, const Blocks &blocks,
        const llvm::CodeExtractorAnalysisCache &cache, unsigned piece,
        std::vector<llvm::Function *> &more)
{
    llvm::CodeExtractor extractor(blocks, &dt);
    if (!extractor.isEligible()) {
        return false;
    }
    llvm::Function *f = extractor.extractCodeRegion(cache);
    if (f == nullptr) {
        return false;
    }
    /* it takes the kernel's attributes, always-inline among them */
    f->removeFnAttr(llvm::Attribute::AlwaysInline);
    f->addFnAttr(llvm::Attribute::NoInline);
    if (f->getInstructionCount() > 2 * piece) { /* a long branch of an if: cut it too */
        more.push_back(f);
    }
    return true;
}

} // namespace

extern "C" int
cc_outline(LLVMModuleRef mod, unsigned piece)
{
    std::vector<llvm::Function *> work;
    for (llvm::Function &f : *llvm::unwrap(mod)) {
        if (!f.isDeclaration() && f.getInstructionCount() > piece) {
            work.push_back(&f);
        }
    }
    int made = 0;
    for (size_t k = 0; k < work.size() && k < 1024; k++) {
        llvm::Function *f = work[k];
        llvm::DominatorTree dt(*f);
        std::vector<Blocks> pieces = pieces_of(dt, piece);
        /* one cache for the function: extracting keeps it valid */
        llvm::CodeExtractorAnalysisCache cache(*f);
        for (const Blocks &blocks : pieces) {
            made += outline(dt, blocks, cache, piece, work);
        }
    }
    return made;
}

extern "C" unsigned
cc_module_size(LLVMModuleRef mod)
{
    return llvm::unwrap(mod)->getInstructionCount();
}
