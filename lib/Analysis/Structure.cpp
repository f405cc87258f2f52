#include "lib/Analysis/Structure.h"
#include "dialect/LinacOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/EquivalenceClasses.h"

using namespace mlir;
using namespace linac;

namespace {

bool isF32Vector(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.getRank() == 1 && tensor.getElementType().isF32();
}

bool isF32ScalarOrVector(Type t) { return t.isF32() || isF32Vector(t); }

/// Gate math the lowerings know how to scalarize: elementwise arith/math ops and f32 constants.
LogicalResult checkAllowedOp(Operation &op) {
  if (isa<LinacDialect>(op.getDialect()))
    return success();
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    if (constant.getType().isF32())
      return success();
    return op.emitOpError("in a recurrence body must be an f32 scalar constant; use linac.splat to make a vector");
  }
  bool elementwise = op.hasTrait<OpTrait::Elementwise>() && isa<arith::ArithDialect, math::MathDialect>(op.getDialect());
  if (!elementwise || op.getNumRegions() != 0)
    return op.emitOpError("is not allowed in a recurrence body; only linac ops, f32 constants and elementwise "
                          "arith/math ops are");
  for (Type t : llvm::concat<Type>(op.getOperandTypes(), op.getResultTypes()))
    if (!isF32ScalarOrVector(t))
      return op.emitOpError() << "in a recurrence body works on f32 scalars and 1-D f32 tensors only, got " << t;
  return success();
}

/// Dimension requirements of a linac op's vector operands and result.
void roleConstraints(Operation *op, bool matrixState, SmallVectorImpl<std::pair<Value, Dim>> &out) {
  Dim valueDim = matrixState ? Dim::Value : Dim::Key;
  if (auto decay = dyn_cast<DecayOp>(op)) {
    if (isF32Vector(decay.getGate().getType()))
      out.push_back({decay.getGate(), Dim::Key});
  } else if (auto write = dyn_cast<WriteOp>(op)) {
    out.push_back({write.getKey(), Dim::Key});
    if (write.getValue())
      out.push_back({write.getValue(), valueDim});
  } else if (auto delta = dyn_cast<DeltaOp>(op)) {
    out.push_back({delta.getKey(), Dim::Key});
    out.push_back({delta.getValue(), valueDim});
  } else if (auto read = dyn_cast<ReadOp>(op)) {
    if (read.getQuery())
      out.push_back({read.getQuery(), Dim::Key});
    if (!read.getBonus().empty()) {
      out.push_back({read.getBonus()[0], Dim::Key});
      out.push_back({read.getBonus()[1], Dim::Key});
      out.push_back({read.getBonus()[2], valueDim});
    }
    out.push_back({read.getResult(), valueDim});
  }
}

/// Operands of an update or read op that must not depend on the state for the recurrence to be linear in it.
SmallVector<std::pair<Value, StringRef>> coefficientOperands(Operation *op) {
  SmallVector<std::pair<Value, StringRef>> out;
  if (auto decay = dyn_cast<DecayOp>(op)) {
    out.push_back({decay.getGate(), "gate"});
  } else if (auto write = dyn_cast<WriteOp>(op)) {
    out.push_back({write.getKey(), "key"});
    if (write.getValue())
      out.push_back({write.getValue(), "value"});
    if (write.getScale())
      out.push_back({write.getScale(), "scale"});
  } else if (auto delta = dyn_cast<DeltaOp>(op)) {
    out.push_back({delta.getKey(), "key"});
    out.push_back({delta.getValue(), "value"});
    out.push_back({delta.getBeta(), "beta"});
  } else if (auto read = dyn_cast<ReadOp>(op)) {
    if (read.getQuery())
      out.push_back({read.getQuery(), "query"});
    for (Value b : read.getBonus())
      out.push_back({b, "bonus operand"});
  }
  return out;
}

} // namespace

std::optional<RecurrenceStructure> RecurrenceStructure::analyze(RecurrenceOp rec) {
  RecurrenceStructure s;
  Block &body = rec.getBody().front();
  StateType stateType = rec.getStateType();
  bool matrix = stateType.isMatrix();

  for (Operation &op : body.without_terminator())
    if (failed(checkAllowedOp(op)))
      return std::nullopt;

  // The state must flow through one chain of updates: each state value is
  // consumed by at most one update, and the yield returns the chain's end.
  s.states.push_back(rec.getStateArgument());
  s.readsOf.emplace_back();
  while (true) {
    Value current = s.states.back();
    SmallVector<Operation *> updaters;
    for (Operation *user : current.getUsers()) {
      if (isa<ReadOp>(user))
        s.readsOf.back().push_back(user);
      else if (!isa<YieldOp>(user))
        updaters.push_back(user);
    }
    llvm::sort(updaters, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    if (updaters.size() > 1) {
      InFlightDiagnostic diag = updaters[1]->emitOpError(
          "updates a state that is already updated by another op; state updates must form one chain");
      diag.attachNote(updaters[0]->getLoc()) << "first update here";
      return std::nullopt;
    }
    Operation *next = updaters.empty() ? nullptr : updaters.front();
    if (!next)
      break;
    s.updates.push_back(next);
    s.states.push_back(next->getResult(0));
    s.readsOf.emplace_back();
  }
  // Reads are collected in use-list order; restore program order for deterministic lowering.
  for (auto &reads : s.readsOf)
    llvm::sort(reads, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  YieldOp yield = rec.getYield();
  if (yield.getState() != s.states.back()) {
    yield.emitOpError("must return the last state of the update chain");
    return std::nullopt;
  }

  // Which values depend on the state, and which on per-token inputs.
  for (Operation &op : body.without_terminator()) {
    bool fromState = isa<ReadOp>(op);
    bool fromToken = false;
    for (Value operand : op.getOperands()) {
      if (isa<StateType>(operand.getType()))
        continue;
      fromState |= s.stateDependent.contains(operand);
      fromToken |= s.tokenDependent.contains(operand);
      if (auto arg = dyn_cast<BlockArgument>(operand))
        fromToken |= !rec.isPerHead(arg.getArgNumber() - 1);
    }
    for (Value result : op.getResults()) {
      if (isa<StateType>(result.getType()))
        continue;
      if (fromState)
        s.stateDependent.insert(result);
      if (fromToken)
        s.tokenDependent.insert(result);
    }
  }
  for (BlockArgument arg : rec.getInputArguments())
    if (!rec.isPerHead(arg.getArgNumber() - 1))
      s.tokenDependent.insert(arg);

  // The chunked and backward derivations need S_t = A_t(S_{t-1}) + B_t with
  // A_t and B_t independent of S: no coefficient may depend on a read.
  for (Operation &op : body.without_terminator()) {
    for (auto [value, what] : coefficientOperands(&op)) {
      if (!s.stateDependent.contains(value))
        continue;
      op.emitOpError() << "makes the recurrence non-linear in the state: its " << what
                       << " depends on a read of the state; the chunked and backward derivations need the "
                          "transition and the write to be independent of S";
      return std::nullopt;
    }
  }

  // Dimension roles: elementwise ops tie their vectors together, linac ops pin them to K or V.
  llvm::EquivalenceClasses<Value> classes;
  auto addVector = [&](Value v) {
    if (isF32Vector(v.getType()))
      classes.insert(v);
  };
  for (BlockArgument arg : rec.getInputArguments())
    addVector(arg);
  for (Operation &op : body.without_terminator()) {
    for (Value r : op.getResults())
      addVector(r);
    if (isa<LinacDialect>(op.getDialect()) && !isa<SplatOp>(op))
      continue;
    Value first;
    for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults())) {
      if (!isF32Vector(v.getType()) || (isa<SplatOp>(op) && v == op.getOperand(0)))
        continue;
      if (first)
        classes.unionSets(first, v);
      else
        first = v;
    }
  }
  addVector(yield.getOutput());

  llvm::DenseMap<Value, std::pair<Dim, Operation *>> classDim;
  bool keyEqualsValue = !matrix || (!ShapedType::isDynamic(stateType.getKeyDim()) &&
                                    stateType.getKeyDim() == stateType.getValueDim());
  auto dimName = [](Dim d) { return d == Dim::Key ? "key (K)" : "value (V)"; };
  auto pin = [&](Value v, Dim d, Operation *where) -> bool {
    Value leader = classes.getLeaderValue(v);
    auto [it, inserted] = classDim.try_emplace(leader, d, where);
    if (inserted || it->second.first == d || keyEqualsValue)
      return true;
    InFlightDiagnostic diag = where->emitOpError()
                              << "uses a vector as a " << dimName(d) << " vector, but it is also used as a "
                              << dimName(it->second.first) << " vector; K and V may differ";
    diag.attachNote(it->second.second->getLoc()) << "other use here";
    return false;
  };
  for (Operation &op : body.without_terminator()) {
    SmallVector<std::pair<Value, Dim>> constraints;
    roleConstraints(&op, matrix, constraints);
    for (auto [v, d] : constraints)
      if (!pin(v, d, &op))
        return std::nullopt;
  }
  if (!pin(yield.getOutput(), matrix ? Dim::Value : Dim::Key, yield))
    return std::nullopt;

  for (auto it = classes.begin(); it != classes.end(); ++it) {
    if (!(*it)->isLeader())
      continue;
    Value leader = (*it)->getData();
    auto found = classDim.find(leader);
    if (found == classDim.end()) {
      Location loc = leader.getLoc();
      if (auto arg = dyn_cast<BlockArgument>(leader))
        rec.emitOpError() << "input #" << arg.getArgNumber()
                          << " is a vector that reaches no state update, read or output, so its dimension "
                             "cannot be inferred";
      else
        emitError(loc) << "vector value reaches no state update, read or output, so its dimension cannot be "
                          "inferred";
      return std::nullopt;
    }
    Dim d = found->second.first;
    int64_t expected = d == Dim::Key ? stateType.getKeyDim() : stateType.getValueDim();
    for (auto member = classes.member_begin(**it); member != classes.member_end(); ++member) {
      Value v = *member;
      s.dims[v] = d;
      int64_t size = cast<RankedTensorType>(v.getType()).getDimSize(0);
      if (!ShapedType::isDynamic(size) && !ShapedType::isDynamic(expected) && size != expected) {
        emitError(v.getLoc()) << "vector of " << size << " elements is used as a " << dimName(d)
                              << " vector, but the state's dimension is " << expected;
        return std::nullopt;
      }
    }
  }
  return s;
}

Variation RecurrenceStructure::variation(Value v) const {
  if (tokenDependent.contains(v))
    return Variation::PerToken;
  Operation *def = v.getDefiningOp();
  if (!def)
    return Variation::PerHead; // a per-head parameter
  if (isa<HeadIndexOp>(def))
    return Variation::PerHead;
  Variation result = Variation::Fixed;
  for (Value operand : def->getOperands())
    if (variation(operand) != Variation::Fixed)
      result = Variation::PerHead;
  return result;
}
