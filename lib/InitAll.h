#ifndef LINAC_INITALL_H
#define LINAC_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace linac {
/// The dialects linac files and lowered modules use.
void registerDialects(mlir::DialectRegistry &registry);
/// linac's own passes.
void registerPasses();
} // namespace linac

#endif
