// The linac dialect: registration, the state type and the per-op verifiers.
// Whole-body rules (linearity, the update chain, dimension roles) live in
// lib/Analysis/Structure.cpp and run from RecurrenceOp's region verifier.

#include "dialect/LinacOps.h"
#include "lib/Analysis/Structure.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace linac;

#include "dialect/LinacDialect.cpp.inc"

#include "dialect/LinacEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialect/LinacTypes.cpp.inc"

#define GET_OP_CLASSES
#include "dialect/LinacOps.cpp.inc"

void LinacDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialect/LinacTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialect/LinacOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// StateType
//===----------------------------------------------------------------------===//

Type StateType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() || parser.parseDimensionList(shape, /*allowDynamic=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return parser.getChecked<StateType>(parser.getContext(), shape, elementType);
}

void StateType::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printDimensionList(getShape());
  printer << "x" << getElementType() << ">";
}

LogicalResult StateType::verify(function_ref<InFlightDiagnostic()> emitError, ArrayRef<int64_t> shape,
                                Type elementType) {
  if (shape.size() != 1 && shape.size() != 2)
    return emitError() << "state must be a K x V matrix or a D vector, got rank " << shape.size();
  for (int64_t d : shape)
    if (!ShapedType::isDynamic(d) && d <= 0)
      return emitError() << "state dimensions must be positive or '?', got " << d;
  if (!elementType.isF32())
    return emitError() << "states are kept in f32, got " << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

/// Sizes agree when either is '?' or both are equal.
static bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static std::string dimString(int64_t d) { return ShapedType::isDynamic(d) ? "?" : std::to_string(d); }

/// Checks that `vec` (a 1-D tensor) can have the state's dimension `dim`, named `role` in messages.
static LogicalResult checkVectorDim(Operation *op, StringRef what, Value vec, int64_t dim, StringRef role) {
  int64_t size = cast<RankedTensorType>(vec.getType()).getDimSize(0);
  if (!compatible(size, dim))
    return op->emitOpError() << what << " has " << dimString(size) << " elements but the state's " << role
                             << " dimension is " << dimString(dim);
  return success();
}

//===----------------------------------------------------------------------===//
// RecurrenceOp
//===----------------------------------------------------------------------===//

ParseResult RecurrenceOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType = [](Builder &builder, ArrayRef<Type> argTypes, ArrayRef<Type> results,
                          function_interface_impl::VariadicFlag, std::string &) {
    return builder.getFunctionType(argTypes, results);
  };
  return function_interface_impl::parseFunctionOp(parser, result, /*allowVariadic=*/false,
                                                  getFunctionTypeAttrName(result.name), buildFuncType,
                                                  getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void RecurrenceOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(p, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
                                           getArgAttrsAttrName(), getResAttrsAttrName());
}

bool RecurrenceOp::isPerHead(unsigned inputIndex) {
  return static_cast<bool>(getArgAttr(inputIndex + 1, "linac.per_head"));
}

YieldOp RecurrenceOp::getYield() { return cast<YieldOp>(getBody().front().getTerminator()); }

LogicalResult RecurrenceOp::verifyRegions() {
  Region &body = getBody();
  if (body.empty() || body.front().empty())
    return emitOpError("needs a body ending in linac.yield");
  if (body.getNumArguments() == 0 || !isa<StateType>(body.getArgument(0).getType()))
    return emitOpError("first argument must be the state (!linac.state<KxVxf32> or !linac.state<Dxf32>)");
  for (auto [i, type] : llvm::enumerate(getArgumentTypes()))
    if (type != body.getArgument(i).getType())
      return emitOpError() << "argument #" << i << " type " << body.getArgument(i).getType()
                           << " differs from the signature's " << type;
  for (BlockArgument arg : getInputArguments()) {
    Type t = arg.getType();
    if (isa<StateType>(t))
      return emitOpError() << "argument #" << arg.getArgNumber()
                           << " is a second state; a recurrence has exactly one state, its first argument";
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!t.isF32() && !(tensor && tensor.getRank() == 1 && tensor.getElementType().isF32()))
      return emitOpError() << "input #" << arg.getArgNumber() << " has type " << t
                           << "; inputs are f32 scalars or 1-D f32 tensors (one token's vector)";
    if (Attribute given = getArgAttr(arg.getArgNumber(), "linac.activation")) {
      auto name = dyn_cast<StringAttr>(given);
      if (!name || !llvm::is_contained(kActivations, name.getValue())) {
        std::string names;
        for (auto [i, known] : llvm::enumerate(kActivations))
          names += (i == 0 ? "\"" : i + 1 == std::size(kActivations) ? " or \"" : ", \"") + known.str() + "\"";
        return emitOpError() << "input #" << arg.getArgNumber() << ": linac.activation must be " << names
                             << ", not " << given;
      }
      if (name.getValue() == "l2_normalize" && !tensor)
        return emitOpError() << "input #" << arg.getArgNumber()
                             << ": linac.activation \"l2_normalize\" needs a vector input, not " << t;
    }
  }
  if (!isa<YieldOp>(body.front().getTerminator()))
    return emitOpError("body must end in linac.yield");
  YieldOp yield = getYield();
  if (yield.getValues().size() != 2)
    return yield.emitOpError() << "must return the new state and the output (2 values), got "
                               << yield.getValues().size() << (yield.getValues().size() == 1 ? "; missing output" : "");
  if (!isa<StateType>(yield.getState().getType()) || yield.getState().getType() != getStateType())
    return yield.emitOpError() << "first value must be the new state of type " << getStateType();
  if (!isa<RankedTensorType>(yield.getOutput().getType()))
    return yield.emitOpError("second value (the output) must be a 1-D f32 tensor");
  ArrayRef<Type> results = getResultTypes();
  if (results.size() != 2 || results[0] != yield.getState().getType() ||
      results[1] != yield.getOutput().getType())
    return emitOpError() << "signature results must be (" << yield.getState().getType() << ", "
                         << yield.getOutput().getType() << ") as returned by linac.yield";
  return RecurrenceStructure::analyze(*this).has_value() ? success() : failure();
}

//===----------------------------------------------------------------------===//
// State-update and read ops
//===----------------------------------------------------------------------===//

LogicalResult DecayOp::verify() {
  auto state = cast<StateType>(getState().getType());
  if (getGate().getType().isF32())
    return success();
  return checkVectorDim(*this, "gate", getGate(), state.getKeyDim(), state.isMatrix() ? "key" : "vector");
}

LogicalResult WriteOp::verify() {
  auto state = cast<StateType>(getState().getType());
  if (state.isMatrix()) {
    if (!getValue())
      return emitOpError("on a matrix state needs a key and a value (S + k v^T)");
    if (failed(checkVectorDim(*this, "key", getKey(), state.getKeyDim(), "key")))
      return failure();
    return checkVectorDim(*this, "value", getValue(), state.getValueDim(), "value");
  }
  if (getValue())
    return emitOpError("on a vector state takes one vector (h + x), not a key and a value");
  return checkVectorDim(*this, "vector", getKey(), state.getKeyDim(), "vector");
}

LogicalResult DeltaOp::verify() {
  auto state = cast<StateType>(getState().getType());
  if (!state.isMatrix())
    return emitOpError("needs a matrix state; the delta rule erases a key's value from S");
  if (failed(checkVectorDim(*this, "key", getKey(), state.getKeyDim(), "key")))
    return failure();
  return checkVectorDim(*this, "value", getValue(), state.getValueDim(), "value");
}

LogicalResult ReadOp::verify() {
  auto state = cast<StateType>(getState().getType());
  if (state.isVector()) {
    if (getQuery() || !getBonus().empty())
      return emitOpError("of a vector state takes no query or bonus (o = h)");
    if (getScale())
      return emitOpError("of a vector state takes no scale");
    return checkVectorDim(*this, "result", getResult(), state.getKeyDim(), "vector");
  }
  if (!getQuery())
    return emitOpError("of a matrix state needs a query (o = scale * S^T q)");
  if (failed(checkVectorDim(*this, "query", getQuery(), state.getKeyDim(), "key")) ||
      failed(checkVectorDim(*this, "result", getResult(), state.getValueDim(), "value")))
    return failure();
  if (!getBonus().empty()) {
    if (getBonus().size() != 3)
      return emitOpError() << "bonus takes (u, k, v), got " << getBonus().size() << " operands";
    if (failed(checkVectorDim(*this, "bonus u", getBonus()[0], state.getKeyDim(), "key")) ||
        failed(checkVectorDim(*this, "bonus key", getBonus()[1], state.getKeyDim(), "key")) ||
        failed(checkVectorDim(*this, "bonus value", getBonus()[2], state.getValueDim(), "value")))
      return failure();
  }
  if (FloatAttr scale = getScaleAttr(); scale && !(scale.getValueAsDouble() > 0.0))
    return emitOpError() << "scale must be positive, got " << scale.getValueAsDouble();
  return success();
}
