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
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<RecurrenceOp> recurrences(module.getOps<RecurrenceOp>());
    for (RecurrenceOp rec : recurrences) {
      auto target = module.lookupSymbol<func::FuncOp>(entrySymbol(rec, forward));
      if (!target) {
        rec.emitOpError() << "has no '" << forward << "' variant to forward linac_" << rec.getSymName()
                          << "_forward to; run the pass that generates it first";
        return signalPassFailure();
      }
      OpBuilder b(module.getContext());
      b.setInsertionPointToEnd(module.getBody());
      auto fn = func::FuncOp::create(b, rec.getLoc(), ("linac_" + rec.getSymName() + "_forward").str(),
                                     target.getFunctionType());
      fn->setAttr("linac.recurrence", b.getStringAttr(rec.getSymName()));
      Block *entry = fn.addEntryBlock();
      b.setInsertionPointToStart(entry);
      func::CallOp::create(b, rec.getLoc(), target, entry->getArguments());
      func::ReturnOp::create(b, rec.getLoc());
      rec.erase();
    }
  }
};
} // namespace
