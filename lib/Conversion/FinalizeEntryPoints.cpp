// linac-finalize-entry-points: the public linac_<name>_forward symbol forwards
// to one generated variant; the recurrence definitions are no longer needed.

#include "dialect/Passes.h"
#include "lib/Conversion/EntryPoint.h"

namespace linac {
#define GEN_PASS_DEF_LINACFINALIZEENTRYPOINTS
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {
struct FinalizeEntryPointsPass : linac::impl::LinacFinalizeEntryPointsBase<FinalizeEntryPointsPass> {
  using Base::Base;

  /// Adds `symbol`, a function that calls `targetSymbol` with its arguments.
  LogicalResult addAlias(RecurrenceOp rec, StringRef symbol, StringRef targetSymbol) {
    ModuleOp module = getOperation();
    auto target = module.lookupSymbol<func::FuncOp>(targetSymbol);
    if (!target)
      return rec.emitOpError() << "has no " << targetSymbol << " to call from " << symbol
                               << "; run the pass that generates that variant first";
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    auto fn = func::FuncOp::create(b, rec.getLoc(), symbol, target.getFunctionType());
    fn->setAttr("linac.recurrence", b.getStringAttr(rec.getSymName()));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    func::CallOp::create(b, rec.getLoc(), target, entry->getArguments());
    func::ReturnOp::create(b, rec.getLoc());
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<RecurrenceOp> recurrences(module.getOps<RecurrenceOp>());
    for (RecurrenceOp rec : recurrences) {
      std::string prefix = ("linac_" + rec.getSymName()).str();
      if (failed(addAlias(rec, prefix + "_forward", prefix + "_forward_" + forward)) ||
          (!backward.empty() && failed(addAlias(rec, prefix + "_backward", prefix + "_backward_" + backward))))
        return signalPassFailure();
      rec.erase();
    }
  }
};
} // namespace
