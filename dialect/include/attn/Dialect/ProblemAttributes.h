//===- ProblemAttributes.h - a problem as a problem op's attributes -*- C++ -*-===//
//
// The problem ops (attn.attention, attn.attention_kvcache,
// attn.combine_splits) hold the PROBLEM fields of spec_fields.def that are
// not implied by their operands as attributes named after the fields. These
// two functions go between an AttentionProblem and those attributes through
// the table, so a new field with an attribute of its name on an op needs no
// edit here or in the op's problem().
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_PROBLEMATTRIBUTES_H
#define ATTN_DIALECT_PROBLEMATTRIBUTES_H

#include "attn/Dialect/Problem.h"

namespace mlir {
class Operation;

namespace attn {

/// Sets on `op` each PROBLEM field for which the op declares an attribute
/// of the same name, unless the field holds its default.
void writeProblemAttributes(Operation *op, const AttentionProblem &problem);

/// Reads into `problem` each PROBLEM field that `op` holds as an attribute
/// of the same name; the others keep their values.
void readProblemAttributes(Operation *op, AttentionProblem &problem);

} // namespace attn
} // namespace mlir

#endif // ATTN_DIALECT_PROBLEMATTRIBUTES_H
